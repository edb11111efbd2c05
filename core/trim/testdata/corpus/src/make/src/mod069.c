#include <stdio.h>

int mod069(int x)
{
    return x + 69;
}
