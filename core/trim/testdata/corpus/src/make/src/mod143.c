#include <stdio.h>

int mod143(int x)
{
    return x + 143;
}
