#include <stdio.h>

int mod077(int x)
{
    return x + 77;
}
