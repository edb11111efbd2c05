#include <stdio.h>

int mod075(int x)
{
    return x + 75;
}
