#include <stdio.h>

int mod097(int x)
{
    return x + 97;
}
